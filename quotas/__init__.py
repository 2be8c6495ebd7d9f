"""Pure client-quota logic (no sockets, no asyncio): entities, store, resolution, sensors."""
