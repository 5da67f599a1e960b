"""`chatagent daemon`: one warm `Runtime` in a background process, so that
`chatagent ask` from a shell pays no browser launch, no imports of the text
pipeline and no model client set-up per question.

- `paths`: the private per-user directory with the socket, lock and log, and
  the checks that keep other users out of it.
- `protocol`: the frames on the socket (newline-delimited JSON, validated),
  and which settings an ask passes per request or must share with the daemon.
- `early`: `ask`'s head start, the ask sent before the CLI or the settings
  load (standard library only).
- `client`: what `ask` and `chatagent daemon start|stop|status` run; cheap to
  import (no browser, no text pipeline, no model libraries).
- `server`: the daemon itself (`chatagent daemon run`).

Nothing is imported here: the client path must stay light.
"""
