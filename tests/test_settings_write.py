"""`chatagent config set` writes the settings file, keys and all, so that no
other user can aim the write elsewhere or keep a copy: a symbolic or hard link
planted where it writes is never written through, and a folder or file another
user could change is refused, saying why. As a user runs it, in a process of its own."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from chatagent.cli import main
from test_settings import run_cli

KEY = "sk-planted-link-test-0123456789"
VICTIM = "the victim's own file\n"


def _set_key(config: Path) -> object:
    return run_cli("config", "set", "openai_api_key", KEY, env={"CHATAGENT_CONFIG": str(config)})


def _private_and_whole(config: Path, planted: str = "") -> None:
    st = os.lstat(config)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_nlink == 1
    assert KEY in config.read_text()
    assert [p.name for p in config.parent.iterdir() if p.name.endswith(".tmp") and p.name != planted] == [], \
        "no temporary file left"


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
@pytest.mark.e2e
def test_a_link_planted_where_config_set_wrote_its_temporary_file_is_not_written_through(
    tmp_path: Path, link: str,
) -> None:
    """The name the temporary file used to have (`config.toml.tmp`), planted as a link
    to another file: that file keeps its text, and the settings file is a new one of its own."""
    folder = tmp_path / "settings"
    folder.mkdir(mode=0o700)
    config = folder / "config.toml"
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    planted = folder / "config.toml.tmp"
    planted.symlink_to(victim) if link == "symlink" else os.link(victim, planted)
    proc = _set_key(config)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == VICTIM, "the link's target was overwritten with the keys"
    _private_and_whole(config, planted.name)
    if link == "hardlink":
        assert victim.stat().st_nlink == 2, "the planted link is left alone: it never became the settings file"


def test_a_link_planted_at_the_very_name_it_writes_makes_the_write_fail_not_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """Even at the name it picks (made known here: it is random), a planted link is refused."""
    folder = tmp_path / "settings"
    folder.mkdir(mode=0o700)
    config = folder / "config.toml"
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    monkeypatch.setattr("chatagent.private_file.secrets.token_hex", lambda n: "guessed")
    (folder / ".config.toml.guessed.tmp").symlink_to(victim)
    monkeypatch.setenv("CHATAGENT_CONFIG", str(config))
    status = main(["config", "set", "openai_api_key", KEY])
    err = capsys.readouterr().err
    assert status == 1 and "could not be written" in err and "Traceback" not in err, err
    assert victim.read_text() == VICTIM and not config.exists()


def _refused(proc: object, where: Path, why: str) -> None:
    assert proc.returncode == 1, proc.stderr  # type: ignore[attr-defined]
    err = proc.stderr  # type: ignore[attr-defined]
    assert f"{where} {why}" in err and "nothing was written" in err and "CHATAGENT_CONFIG" in err, err
    assert "Traceback" not in err


@pytest.mark.e2e
def test_a_settings_folder_other_users_can_write_is_refused_saying_why(tmp_path: Path) -> None:
    open_folder = tmp_path / "shared"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    _refused(_set_key(open_folder / "config.toml"), open_folder, "can be written by other users (mode 0777)")
    assert not (open_folder / "config.toml").exists()

    # A folder above it open to them: they could swap the settings folder itself.
    below = open_folder / "mine"
    below.mkdir(mode=0o700)
    _refused(_set_key(below / "config.toml"), open_folder, "can be written by other users")
    assert not (below / "config.toml").exists()

    # /tmp's kind (anyone may write, only owners rename: the sticky bit) holds a file of one's own.
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    assert _set_key(sticky / "config.toml").returncode == 0
    _private_and_whole(sticky / "config.toml")


@pytest.mark.e2e
def test_a_settings_file_its_group_can_write_is_refused_and_kept_as_it_was(tmp_path: Path) -> None:
    folder = tmp_path / "settings"
    folder.mkdir(mode=0o700)
    config = folder / "config.toml"
    config.write_text('budget = 1500\n')
    config.chmod(0o664)
    _refused(_set_key(config), config, "can be written by its group (mode 0664)")
    assert config.read_text() == 'budget = 1500\n'


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a folder to another user needs root")
@pytest.mark.e2e
def test_a_settings_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    _refused(_set_key(theirs / "config.toml"), theirs, "belongs to another user (uid 65534)")
    assert not (theirs / "config.toml").exists()
