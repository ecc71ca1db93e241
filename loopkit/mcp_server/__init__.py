"""``loopkit mcp`` (SPEC section 12): agents ask natively, over the Model Context Protocol.

- :mod:`~loopkit.mcp_server.server`: the stdio server on the SDK's ``MCPServer``, and the
  one place a refusal becomes an ``isError`` result.
- :mod:`~loopkit.mcp_server.asking`: ``request_human_input``, ``request_human_review``,
  ``escalate`` — ``loopkit ask`` and ``loopkit escalate``'s own code paths.
- :mod:`~loopkit.mcp_server.reading`: ``list_human_requests``, ``get_human_request``,
  ``wait_for_human`` — ``loopkit requests``, ``requests show``, ``requests wait``.
- :mod:`~loopkit.mcp_server.models`: the typed results (each tool's ``outputSchema``).
- :mod:`~loopkit.mcp_server.preview`: dry runs, on a store that writes nothing.
- :mod:`~loopkit.mcp_server.workspace`: the workspace served, found as every command finds it.
- :mod:`~loopkit.mcp_server.clientconfig`: ``--print-config``.

Not named ``mcp``, so that it can never shadow the SDK. Only ``loopkit mcp`` imports the SDK
(it takes about a second); no other command pays for it. MCP tools only ask: none answers.
"""
