"""Claude Code hooks (SPEC section 12). Kept free of imports: the PreToolUse hook runs
before every tool call, and a call that matches no rule must cost little more than Python's
own start-up (see :mod:`loopkit.hooks.pretooluse`)."""
