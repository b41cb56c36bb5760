"""Starts llama.cpp's HTTP server (the `xllamacpp` wheel) on 127.0.0.1 for
gyre's tests: `server.py N_CTX N_PREDICT`. The wheel and the GGUF model are
found in $GYRE_TEST_LLAMA_DIR (installed by .ci/run). Prints one line,
`listening http://127.0.0.1:PORT`, once the model is loaded, then serves
until its stdin closes (the test holds the pipe, so the server never
outlives it)."""

import glob
import os
import sys

root = os.environ["GYRE_TEST_LLAMA_DIR"]
sys.path.insert(0, root)
import xllamacpp  # noqa: E402

models = glob.glob(os.path.join(root, "**", "SmolLM2-135M-Instruct*.gguf"), recursive=True)
if not models:
    sys.exit(f"no SmolLM2 GGUF under {root}; run .ci/run")
params = xllamacpp.CommonParams()
params.model.path = models[0]
params.n_ctx = int(sys.argv[1])
params.n_predict = int(sys.argv[2])
params.hostnames = ["127.0.0.1"]
params.port = 0
params.cpuparams.n_threads = 2
server = xllamacpp.Server(params)
print("listening", server.listening_address, flush=True)
while sys.stdin.buffer.read(4096):
    pass
