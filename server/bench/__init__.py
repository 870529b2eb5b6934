"""The benchmark's measuring side: which prompts to send, streamed requests timed on both ends,
busy neighbours, machine facts, the figures over the runs and the speculative-settings sweep.
Presenting them (terminal table, Markdown, chart) is the CLI's part, in ``localagent.bench``."""
