"""Owns sending a run's notifications without slowing it: one background thread per channel
(a hanging command cannot hold up the webhook), fed by a listener on events.jsonl
(progress.add_listener), so the run only ever appends to a queue. At the end of the run,
detach() gives the queued notifications (the run_end among them) at most the notify timeout,
then kills what still runs and leaves. The first failure of each channel is logged as a `log`
event of kind notify_failed; later ones are not. Never prints."""
from __future__ import annotations

import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Mapping

from ralphpy.errors import RalphError
from ralphpy.notify import channels, events, settings
from ralphpy.runs import progress

QUEUE_LIMIT = 100           # a notifier stuck all night keeps the newest notifications


class _Worker:
    def __init__(self, channel: channels.Channel, timeout_s: float, cwd: str, failed) -> None:
        self.channel, self.timeout_s, self.cwd, self.failed = channel, timeout_s, cwd, failed
        self.queue: deque[dict[str, Any]] = deque(maxlen=QUEUE_LIMIT)
        self.cond = threading.Condition()
        self.closing, self.deadline = False, None
        self.proc: subprocess.Popen | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True,
                                       name=f"ralph-notify-{channel.kind}")
        self.thread.start()

    def submit(self, payload: dict[str, Any]) -> None:
        with self.cond:
            self.queue.append(payload)
            self.cond.notify()

    def _track(self, proc: subprocess.Popen | None) -> None:
        self.proc = proc

    def _loop(self) -> None:
        while True:
            with self.cond:
                while not self.queue and not self.closing:
                    self.cond.wait()
                if not self.queue:
                    return
                payload = self.queue.popleft()
            try:
                channels.deliver(self.channel, payload, timeout=self.timeout_s, cwd=self.cwd,
                                 deadline=self.deadline, track=self._track)
            except channels.NotifyFailed as err:
                self.failed(self.channel, str(err))
            except Exception as err:   # a notifier's bug must not end the run: logged instead
                self.failed(self.channel, f"{type(err).__name__}: {err}")

    def close(self, deadline: float) -> None:
        with self.cond:
            self.closing, self.deadline = True, deadline
            self.cond.notify()

    def join(self, deadline: float) -> bool:
        """True when everything queued went out before the deadline."""
        self.thread.join(max(0.0, deadline - time.monotonic()))
        return not self.thread.is_alive()

    def stop(self) -> None:
        proc = self.proc
        if proc is not None:
            channels.kill(proc)        # a hanging command does not outlive the run


class Dispatcher:
    """The listener of one run: turns its events into notifications for every channel."""

    def __init__(self, ralph_dir: Path, run_id: str, config: settings.Config) -> None:
        self.ralph_dir, self.run_id, self.config = Path(ralph_dir), run_id, config
        self.tracker = events.Tracker(ralph_dir, run_id)
        self.logged: set[str] = set()
        self.lock = threading.Lock()
        cwd = str(self.ralph_dir.absolute().parent)
        self.workers = [_Worker(channels.parse(spec), config.timeout_s, cwd, self._failed)
                        for spec in config.channels]

    def __call__(self, ralph_dir: Path, run_id: str, record: dict[str, Any]) -> None:
        if run_id != self.run_id:
            return
        with self.lock:                 # events come from the loop and from worker threads
            found = self.tracker.notifications(record)
        for payload in found:
            for worker in self.workers:
                worker.submit(payload)

    def _failed(self, channel: channels.Channel, why: str) -> None:
        with self.lock:
            if channel.label in self.logged:
                return
            self.logged.add(channel.label)
        try:
            progress.append_event(self.ralph_dir, self.run_id, "log", kind="notify_failed",
                                  message=f"notification by {channel.label} failed: {why} "
                                          "(later failures of this channel are not logged)")
        except RalphError:
            pass                        # the run's own writes report a full disk

    def close(self) -> bool:
        deadline = time.monotonic() + self.config.timeout_s
        for worker in self.workers:
            worker.close(deadline)
        sent = True
        for worker in self.workers:
            if not worker.join(deadline):       # its own failure would come as the run leaves,
                sent = False                    # or name the kill below ("exit -9")
                self._failed(worker.channel, f"{len(worker.queue) + 1} notification(s) not "
                             f"delivered when the run ended (notify_timeout "
                             f"{self.config.timeout_s:g}s)")
                worker.stop()
        return sent


_ACTIVE: dict[tuple[str, str], Dispatcher] = {}


def attach(ralph_dir: Path, run_id: str, options: Mapping[str, Any]) -> Dispatcher | None:
    """Start notifying the events of this run, when the options name a channel."""
    config = settings.config(options)
    if config is None:
        return None
    dispatcher = Dispatcher(ralph_dir, run_id, config)
    _ACTIVE[(str(ralph_dir), run_id)] = dispatcher
    progress.add_listener(dispatcher)
    return dispatcher


def detach(ralph_dir: Path, run_id: str) -> bool:
    """Stop listening and give what is queued at most the notify timeout. True: all sent."""
    dispatcher = _ACTIVE.pop((str(ralph_dir), run_id), None)
    if dispatcher is None:
        return True
    progress.remove_listener(dispatcher)
    return dispatcher.close()


__all__ = ["Dispatcher", "attach", "detach", "QUEUE_LIMIT"]
