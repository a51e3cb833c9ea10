"""Idle reserved capacity: the float noise of held less used reads as 0, real idle capacity does not
(planner.core.units.idle_of; the showback's and the memo's idle dollars)."""

from __future__ import annotations

import numpy as np

from planner.core.units import IDLE_REL, idle_of


def test_noise_reads_zero_and_real_idle_stays():
    held = np.array([1000.0, 1000.0, 1000.0, 0.0, 5.0])
    # the same hours summed two ways: a few ulps apart
    used = np.array([sum([100.0 / 3] * 30), 999.0, 1000.5, 0.0, 5.0 - 1e-3])
    got = idle_of(held, used)
    assert got[0] == 0.0 and 1000.0 - used[0] != 0.0  # noise (1.1e-13 GPU-hours) is 0
    assert got[1] == 1.0  # a GPU-hour idle is idle
    assert got[2] == 0.0  # more used than held: never negative
    assert got[3] == 0.0
    assert got[4] == 5.0 - used[4] and got[4] > IDLE_REL * 5.0  # small but real


def test_threshold_is_relative_to_what_is_held():
    big = 1e9
    assert idle_of(big, big - 0.5 * IDLE_REL * big) == 0.0
    assert idle_of(big, big - 2.0 * IDLE_REL * big) == 2.0 * IDLE_REL * big
    assert float(idle_of(3.0, 3.0 - 1e-12)) == 0.0 and float(idle_of(3.0, 2.0)) == 1.0
