"""`vlmrl view`'s server and page: a store read per request (``source``), frames encoded and cached
(``frames``), the HTTP API (``server``) and the page itself (``static/``, vanilla JS shipped as package data).
The verb is ``vlmrl.pipelines.view``; the labels format is ``vlmrl.scorers.labels``."""
