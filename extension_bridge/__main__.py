"""`python -m extension_bridge ORIGIN`: the native-messaging host Chrome starts."""

from chatagent import startup

# The garbage collector, paused until the runtime is warm (chatagent/startup.py; host._run_warm).
with startup.paused():
    from .host import main

    status = main()
raise SystemExit(status)
