"""Wire plumbing: frames, request/response headers, error codes."""
