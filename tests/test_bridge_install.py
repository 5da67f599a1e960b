"""Host manifest install/uninstall/status, and the extension ID."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from extension_bridge import install as inst
from extension_bridge.errors import InstallError
from extension_bridge.install import (
    EXTENSION_DIR,
    EXTENSION_ID,
    FIREFOX_EXTENSION_ID,
    HOST_NAME,
    extension_id_from_key,
    hosts_dir,
    install,
    manifest_for,
    status,
    uninstall,
    write_host_manifest,
)


def test_extension_id_matches_committed_key() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key_b64 = json.loads((EXTENSION_DIR / "manifest.json").read_text())["key"]
    der = base64.b64decode(key_b64)
    pub = serialization.load_der_public_key(der)
    assert isinstance(pub, rsa.RSAPublicKey) and pub.key_size == 2048
    # Independent re-derivation of Chrome's rule.
    expected = hashlib.sha256(der).hexdigest()[:32].translate(str.maketrans("0123456789abcdef", "abcdefghijklmnop"))
    assert EXTENSION_ID == expected == extension_id_from_key(key_b64)
    assert len(EXTENSION_ID) == 32 and set(EXTENSION_ID) <= set("abcdefghijklmnop")
    assert EXTENSION_ID == "mejinmnindgennjmomelofmhdjeedkml"  # pinned: the key must not change silently


def test_no_private_key_in_extension_dir() -> None:
    for path in EXTENSION_DIR.rglob("*"):
        if path.is_file():
            assert b"PRIVATE KEY" not in path.read_bytes(), path
            assert path.suffix not in {".pem", ".key", ".crx"}, path


def test_manifest_for_chromium_family_exact() -> None:
    for browser in ("chrome", "chromium", "edge", "brave"):
        assert manifest_for(browser, "/opt/x/launcher.sh") == {
            "name": "com.chatagent.bridge",
            "description": inst.HOST_DESCRIPTION,
            "path": "/opt/x/launcher.sh",
            "type": "stdio",
            "allowed_origins": [f"chrome-extension://{EXTENSION_ID}/"],
        }


def test_manifest_for_firefox_uses_allowed_extensions() -> None:
    m = manifest_for("firefox", "/opt/x/launcher.sh")
    assert m["allowed_extensions"] == [FIREFOX_EXTENSION_ID]
    assert "allowed_origins" not in m


def test_manifest_requires_absolute_launcher() -> None:
    with pytest.raises(InstallError, match="absolute"):
        manifest_for("chrome", "relative/launcher.sh")


def test_install_into_dir_writes_manifest_and_executable_launcher(tmp_path: Path) -> None:
    target = tmp_path / "NativeMessagingHosts"
    res = install("chromium", target_dir=target)
    manifest_path = target / f"{HOST_NAME}.json"
    launcher = target / f"{HOST_NAME}.sh"
    assert res.manifest_path == str(manifest_path) and res.launcher_path == str(launcher)
    assert res.extension_id == EXTENSION_ID
    assert json.loads(manifest_path.read_text()) == manifest_for("chromium", launcher)
    mode = launcher.stat().st_mode
    assert mode & stat.S_IXUSR and mode & stat.S_IXOTH
    text = launcher.read_text()
    assert text.startswith("#!/bin/sh\n")
    assert f'exec {sys.executable} -m extension_bridge "$@"' in text
    assert not list(target.glob("*.tmp"))
    # The launcher starts *this* interpreter with the package importable.
    probe = text.replace("-m extension_bridge", "-c 'import extension_bridge, sys; print(sys.argv[1:])'")
    out = subprocess.run(
        ["sh", "-c", probe, "launcher", "chrome-extension://x/"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['chrome-extension://x/']"


def test_install_twice_overwrites_and_uninstall_removes(tmp_path: Path) -> None:
    install("chrome", target_dir=tmp_path)
    install("chrome", target_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{HOST_NAME}.json", f"{HOST_NAME}.sh"]
    removed = uninstall("chrome", target_dir=tmp_path)
    assert sorted(Path(p).name for p in removed) == [f"{HOST_NAME}.json", f"{HOST_NAME}.sh"]
    assert list(tmp_path.iterdir()) == []
    assert uninstall("chrome", target_dir=tmp_path) == []


def test_firefox_install(tmp_path: Path) -> None:
    res = install("firefox", target_dir=tmp_path)
    data = json.loads(Path(res.manifest_path).read_text())
    assert data["allowed_extensions"] == [FIREFOX_EXTENSION_ID]
    assert data["path"] == res.launcher_path


def test_write_host_manifest_for_a_test_profile(tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    res = write_host_manifest(profile / "NativeMessagingHosts")
    assert Path(res.manifest_path).parent == profile / "NativeMessagingHosts"
    assert json.loads(Path(res.manifest_path).read_text())["allowed_origins"] == [f"chrome-extension://{EXTENSION_ID}/"]


def test_user_paths_linux_and_macos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path
    assert hosts_dir("chrome", platform="linux", home=home) == home / ".config/google-chrome/NativeMessagingHosts"
    assert hosts_dir("chromium", platform="linux", home=home) == home / ".config/chromium/NativeMessagingHosts"
    assert hosts_dir("edge", platform="linux", home=home) == home / ".config/microsoft-edge/NativeMessagingHosts"
    assert hosts_dir("brave", platform="linux", home=home) == (
        home / ".config/BraveSoftware/Brave-Browser/NativeMessagingHosts"
    )
    assert hosts_dir("firefox", platform="linux", home=home) == home / ".mozilla/native-messaging-hosts"
    assert hosts_dir("chrome", "system", platform="linux") == Path("/etc/opt/chrome/native-messaging-hosts")
    sup = home / "Library/Application Support"
    assert hosts_dir("chrome", platform="darwin", home=home) == sup / "Google/Chrome/NativeMessagingHosts"
    assert hosts_dir("firefox", platform="darwin", home=home) == sup / "Mozilla/NativeMessagingHosts"
    assert hosts_dir("chrome", "system", platform="darwin") == Path("/Library/Google/Chrome/NativeMessagingHosts")
    with pytest.raises(InstallError, match="not supported"):
        hosts_dir("chrome", platform="win32", home=home)
    with pytest.raises(InstallError, match="Unknown browser"):
        hosts_dir("safari", platform="linux", home=home)  # type: ignore[arg-type]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert hosts_dir("chromium", platform="linux") == tmp_path / "xdg/chromium/NativeMessagingHosts"


def test_default_install_and_status_use_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if sys.platform not in ("linux", "darwin"):
        pytest.skip("Linux/macOS only")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    before = {(s.browser, s.scope): s for s in status(scopes=("user",))}
    assert not any(s.installed for s in before.values())
    res = install("brave")
    assert res.scope == "user" and res.manifest_path.startswith(str(tmp_path))
    after = {s.browser: s for s in status(scopes=("user",))}
    assert after["brave"].installed and after["brave"].ok, after["brave"].problems
    assert not after["chrome"].installed
    assert "installed" in after["brave"].describe()
    uninstall("brave")
    assert not any(s.installed for s in status(scopes=("user",)))


def test_status_reports_broken_installs(tmp_path: Path) -> None:
    install("chrome", target_dir=tmp_path)
    ok = inst.check_dir("chrome", "custom", tmp_path)
    assert ok.ok and ok.problems == []
    manifest = tmp_path / f"{HOST_NAME}.json"
    data = json.loads(manifest.read_text())
    data["allowed_origins"] = ["chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"]
    manifest.write_text(json.dumps(data))
    os.chmod(tmp_path / f"{HOST_NAME}.sh", 0o644)
    bad = inst.check_dir("chrome", "custom", tmp_path)
    assert not bad.ok
    assert any("allowed_origins" in p for p in bad.problems)
    assert any("not executable" in p for p in bad.problems)
    assert "BROKEN" in bad.describe()


def test_cli_install_status_uninstall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert inst.main(["install", "chromium", "--dir", str(tmp_path)]) == 0
    assert (tmp_path / f"{HOST_NAME}.json").exists()
    assert inst.main(["uninstall", "chromium", "--dir", str(tmp_path)]) == 0
    assert not (tmp_path / f"{HOST_NAME}.json").exists()
    assert inst.main(["install", "netscape", "--dir", str(tmp_path)]) == 1
    assert "Unknown browser" in capsys.readouterr().err


def test_install_permission_error_is_actionable(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    with pytest.raises(InstallError, match="permission"):
        install("chrome", target_dir=ro)
