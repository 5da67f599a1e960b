"""`python -m extension_bridge ORIGIN`: the native-messaging host Chrome starts."""

from .host import main

raise SystemExit(main())
