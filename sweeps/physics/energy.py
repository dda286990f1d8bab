"""Energy per token: the devices at board power for the bound's time (beyond-the-step section 4).

An estimate, labelled as one: a device draws at most its board power (TGP/TDP) and a bound's
time is a lower bound, so neither is a measurement of the energy a run takes.
"""

from __future__ import annotations

from sweeps.physics._array import Array


def energy_per_token(board_power: Array, devices: Array, time: Array, tokens: Array) -> Array:
    """Energy per token, ``board_power * devices * time / tokens``.

    Parameters
    ----------
    board_power : Board power of one device (TGP/TDP; NaN where unknown) [W]
    devices : Devices drawing it for that time [device]
    time : Time the tokens take [s]
    tokens : Tokens produced in that time [token]

    Returns
    -------
    Energy per token, an estimate [J/token]
    """
    return board_power * devices * time / tokens


def tokens_per_joule(energy: Array) -> Array:
    """Tokens per joule, the inverse of the energy per token.

    Parameters
    ----------
    energy : Energy per token [J/token]

    Returns
    -------
    Tokens per joule, an estimate [token/J]
    """
    return 1 / energy
