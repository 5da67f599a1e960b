"""`python -m extension_bridge ORIGIN`: the native-messaging host Chrome starts."""

from .answer import agent_answer
from .host import main

raise SystemExit(main(agent_answer))
