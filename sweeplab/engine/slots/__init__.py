"""Warm trial slots: long-lived Ray Train groups that run one trial after another.

Starting a trainer group costs a Train controller, its helper actors and N workers that import
torch and build a process group: about 8 s for 2 CPU workers, more than many ASHA trials train.
A slot keeps one ``TorchTrainer`` group alive for the whole sweep. Train still owns placement,
the worker processes, the ``torch.distributed`` group, worker health and group restarts; its
workers run :func:`slot_worker_loop` instead of one function. The loop takes the next
*assignment* (a trial's config, the checkpoint it starts from and its folder) from the slot's
:class:`SlotHost` actor and runs the user's unchanged ``train_func`` on it.

Inside an assignment, ``ray.train.report`` goes to the host instead of Train: each rank's
report waits until every rank has reported the same step, the host hands the aggregated result
to the trial loop's backend, and the ranks go on only once the loop has decided the trial
continues.
A stopped, paused or exploited trial therefore leaves ``train_func`` at a report on every rank
together, and no rank is left waiting in a collective.

    SlotBackend (the loop) --submit--> SlotHost --next_assignment--> workers (rank 0..N-1)
            ^                                  |  <------ report(step, rank, metrics) ------
            +--------- next_event -------------+  ------- "continue" / "leave" ------------>

The parts, one module each: ``_protocol`` (the assignment, decisions and report keys they
exchange), ``_host`` (:class:`SlotHost`), ``_worker`` (the loop each rank runs), ``_pool``
(starting and closing a sweep's slots) and ``_in_process`` (a slot for one-worker trials: the
trial runs in the host actor itself).
"""

from __future__ import annotations

from sweeplab.engine.slots._host import SlotHost
from sweeplab.engine.slots._in_process import InProcessHost, start_in_process_hosts
from sweeplab.engine.slots._pool import close_slots, slot_name, start_slots
from sweeplab.engine.slots._protocol import CONTINUE, LEAVE, Assignment

__all__ = [
    "CONTINUE",
    "LEAVE",
    "Assignment",
    "InProcessHost",
    "SlotHost",
    "close_slots",
    "slot_name",
    "start_in_process_hosts",
    "start_slots",
]
