"""`python -m extension_bridge ORIGIN`: the native-messaging host Chrome starts."""

from .answer import AgentAnswerer
from .host import main

answerer = AgentAnswerer()
raise SystemExit(main(answerer, warm=answerer.warm))
