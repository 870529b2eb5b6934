"""``localagent bench``: measure profiles (or running servers) on the same prompts and sampling,
and write the numbers as a terminal table, JSON, a Markdown report and a chart. This package is
the command line and the rendering; the measuring itself is ``server.bench``."""
