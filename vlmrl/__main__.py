from vlmrl.cli import entrypoint

entrypoint()
