"""Dynamic broker and topic configs."""
