"""bruce.tool: the bruce-wire command."""
