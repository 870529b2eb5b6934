"""What tests and scripts share, none of it a test itself: the test doubles and the helpers.

- ``scripted_model``: an OpenAI-compatible chat server on loopback that plays pre-written turns;
- ``synthetic_runtime``: a canned agent and runtime for the TUI, no server;
- ``acp_client``: a client for ``localagent acp`` over a real subprocess;
- ``fake_engines``: small vLLM and SGLang servers (``python -m tests.support.fake_engines``);
- ``fake_hf_hub``: a tiny Hugging Face Hub over real HTTP;
- ``fake_llama_server``: a stand-in llama-server binary, run as a program;
- ``process_probe``: finding a test's processes by a unique number in their command line.

Both the tests and ``scripts/`` import it as ``tests.support``: the project is installed in
editable mode, so the repository root, and with it ``tests``, is importable from anywhere.
"""
