"""The viewer's HTTP side: one page (``static/``, vanilla JS, no CDN) and a small JSON + image API.

    GET  /                                   the page
    GET  /api/info                           the store: path, task, rate, cameras, scorers, clip settings
    GET  /api/episodes[?refresh=1]           one summary per episode, with its labels
    GET  /api/episodes/{id}                  the episode's per-step series (scores, rewards, joints, ...)
    GET  /api/frames/{camera}/{id}/{step}    one frame (PNG or JPEG), encoded once and cached
    POST /api/labels                         {"episode", "label", "start", "stop"}: add or replace a label
    DELETE /api/labels?episode=&start=&stop= remove one

Errors come back as ``{"error": "<one sentence>"}`` (404: no such episode/step/camera; 422: the data
cannot be read, e.g. a damaged episode), which the page shows where the thing would have been.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from buffer.errors import BufferError
from vlmrl.errors import ConfigError
from vlmrl.scorers.labels import Label, LabelFile, parse_label
from vlmrl.view.frames import FrameImages
from vlmrl.view.source import EpisodeStore

STATIC = Path(__file__).parent / "static"
PAGE_FILES = {"viewer.js": "text/javascript", "viewer.css": "text/css"}


def build_app(store: EpisodeStore, frames: FrameImages, labels: LabelFile, annotator: str) -> Any:
    """The FastAPI app serving ``store``."""
    from fastapi import FastAPI, Request
    from fastapi.responses import FileResponse, JSONResponse, Response

    app = FastAPI(title="vlmrl view", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.labels_path = labels.path
    token = hashlib.sha1(f"{store.located.store.resolve()}:{time.time()}".encode()).hexdigest()[:10]
    summaries: dict[str, Any] = {}
    summaries_lock = threading.Lock()

    @app.exception_handler(KeyError)
    async def not_found(_: Request, exc: KeyError) -> JSONResponse:
        return JSONResponse({"error": str(exc.args[0]) if exc.args else "not found"}, status_code=404)

    @app.exception_handler(BufferError)
    async def unreadable(_: Request, exc: BufferError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=422)

    @app.exception_handler(ConfigError)
    async def bad_request(_: Request, exc: ConfigError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=400)

    @app.get("/")
    def page() -> FileResponse:
        return FileResponse(
            STATIC / "index.html", media_type="text/html", headers={"Cache-Control": "no-cache"}
        )

    @app.get("/static/{name}")
    def static(name: str) -> FileResponse:
        if name not in PAGE_FILES:
            raise KeyError(f"no page file {name!r}")
        return FileResponse(STATIC / name, media_type=PAGE_FILES[name], headers={"Cache-Control": "no-cache"})

    @app.get("/api/info")
    def info() -> dict[str, Any]:
        return {
            "path": str(store.located.store),
            "kind": store.located.kind,
            "labels_path": str(labels.path),
            "task": store.task,
            "control_hz": store.control_hz,
            "cameras": [
                {"name": c, "shape": list(store.frame_shape(c)), "format": frames.format_of(c)}
                for c in store.cameras
            ],
            "scorers": store.scorers(),
            "clip_length": store.clip_length,
            "clip_stride": store.clip_stride,
            "annotator": annotator,
            "episodes": len(store.episode_ids()),
            "damaged": len(store.damaged),
            "skipped": {str(k): v for k, v in store.skipped.items()},
            "token": token,
        }

    def labels_of(episode: int) -> list[dict[str, Any]]:
        return [asdict(x) for x in labels.of_episode(episode)]

    @app.get("/api/episodes")
    def episodes(refresh: bool = False) -> dict[str, Any]:
        with summaries_lock:
            if (refresh and store.refresh()) or "rows" not in summaries:
                summaries["rows"] = store.summaries()
            rows = summaries["rows"]
        by_episode: dict[int, list[Label]] = {}
        for x in labels.all():
            by_episode.setdefault(x.episode, []).append(x)
        return {
            "episodes": [r | {"labels": [asdict(x) for x in by_episode.get(r["id"], [])]} for r in rows],
            "scorers": store.scorers(),
        }

    @app.get("/api/episodes/{episode}")
    def episode(episode: int) -> dict[str, Any]:
        data = store.series(episode)
        data["labels"] = labels_of(episode)
        return data

    @app.get("/api/frames/{camera}/{episode}/{step}")
    def frame(camera: str, episode: int, step: int) -> Response:
        data, media = frames.get(camera, episode, step)
        return Response(data, media_type=media, headers={"Cache-Control": "private, max-age=3600"})

    @app.post("/api/labels")
    def put_label(body: dict[str, Any]) -> dict[str, Any]:
        label = parse_label({**body, "annotator": annotator, "time": ""}, "label")
        start, end = store.rows(label.episode)
        if label.stop is not None and label.stop > end - start - 1:
            raise ConfigError(
                f"label: episode {label.episode} has steps 0..{end - start - 2}, not up to {label.stop}"
            )
        saved = labels.put(label)
        return {"saved": asdict(saved), "labels": labels_of(label.episode)}

    @app.delete("/api/labels")
    def delete_label(episode: int, start: int | None = None, stop: int | None = None) -> dict[str, Any]:
        if not labels.remove(episode, start, stop):
            raise KeyError(f"no label of episode {episode} steps {start}..{stop}")
        return {"labels": labels_of(episode)}

    return app


class Server:
    """The app on a uvicorn server in a background thread (``port`` 0: any free port).

    with Server(app, port=0) as server:
        print(server.url)
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0):
        import uvicorn

        self._server = uvicorn.Server(
            uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
        )
        self._server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._thread = threading.Thread(target=self._server.run, name="vlmrl-view", daemon=True)
        self.host = host

    def start(self, timeout_s: float = 30.0) -> Server:
        """Start serving; returns once the socket listens.

        Raises:
            ConfigError: the server did not start (the port is taken, say).
        """
        self._check_port()
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(
                    f"the viewer could not listen on {self.host} (is the port in use? try --port 0)"
                )
            time.sleep(0.02)
        return self

    def _check_port(self) -> None:
        """One line, instead of uvicorn's log, when the port cannot be had."""
        import socket

        port = self._server.config.port
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((self.host, port))
            except OSError as exc:
                raise ConfigError(
                    f"cannot listen on {self.host}:{port} ({exc.strerror or exc}); pass another --port (0: any free one)"
                ) from None

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self._server.servers[0].sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        """http://host:port/"""
        return f"http://{self.host}:{self.port}/"

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C raises KeyboardInterrupt here)."""
        while self._thread.is_alive():
            self._thread.join(0.5)

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self._server.should_exit = True
        self._thread.join(10)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
