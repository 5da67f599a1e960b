"""`chatagent`'s exit statuses, and what an interrupted command says.

Its own module, importing nothing: `__main__` reads it after a Ctrl-C that
may have cut an import short, when importing anything more could fail."""

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NO_ANSWER, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_BROKEN_PIPE = 141  # stdout's reader stopped reading (`| head`): 128 + SIGPIPE, as other programs end
EXIT_TERMINATED = 143  # stopped by SIGTERM (`chatagent mcp`): 128 + SIGTERM
INTERRUPTED = "Interrupted."
