"""Published Dirichlet prior parameters (data only).

Match-emission prior: the nine-component Dirichlet mixture of Sjölander, Karplus, Brown, Hughey,
Krogh, Mian & Haussler, "Dirichlet mixtures: a method for improved detection of weak but
significant protein sequence homology", CABIOS 12:327-345 (1996), trained on Blocks9; it is the
default match-emission prior of HMMER3 (``p7_prior_CreateAmino``).
Transition priors: HMMER3's single-component Dirichlets (attributed there to G. Mitchison).

The numbers are listed in HMMER's alphabetical residue order ``ACDEFGHIKLMNPQRSTVWY`` and
re-ordered here once to :data:`homalign.alphabet.ALPHABET` order.
"""

from __future__ import annotations

import numpy as np

from homalign.alphabet import AMINO_ACIDS

SOURCE_ORDER = "ACDEFGHIKLMNPQRSTVWY"

#: mixture coefficients q_k of the nine components
SJOLANDER9_WEIGHTS = np.array(
    [0.178091, 0.056591, 0.0960191, 0.0781233, 0.0834977, 0.0904123, 0.114468, 0.0682132,
     0.234585]
)

_ALPHA_SOURCE = np.array([
    [0.270671, 0.039848, 0.017576, 0.016415, 0.014268, 0.131916, 0.012391, 0.022599, 0.020358,
     0.030727, 0.015315, 0.048298, 0.053803, 0.020662, 0.023612, 0.216147, 0.147226, 0.065438,
     0.003758, 0.009621],
    [0.021465, 0.010300, 0.011741, 0.010883, 0.385651, 0.016416, 0.076196, 0.035329, 0.013921,
     0.093517, 0.022034, 0.028593, 0.013086, 0.023011, 0.018866, 0.029156, 0.018153, 0.036100,
     0.071770, 0.419641],
    [0.561459, 0.045448, 0.438366, 0.764167, 0.087364, 0.259114, 0.214940, 0.145928, 0.762204,
     0.247320, 0.118662, 0.441564, 0.174822, 0.530840, 0.465529, 0.583402, 0.445586, 0.227050,
     0.029510, 0.121090],
    [0.070143, 0.011140, 0.019479, 0.094657, 0.013162, 0.048038, 0.077000, 0.032939, 0.576639,
     0.072293, 0.028240, 0.080372, 0.037661, 0.185037, 0.506783, 0.073732, 0.071587, 0.042532,
     0.011254, 0.028723],
    [0.041103, 0.014794, 0.005610, 0.010216, 0.153602, 0.007797, 0.007175, 0.299635, 0.010849,
     0.999446, 0.210189, 0.006127, 0.013021, 0.019798, 0.014509, 0.012049, 0.035799, 0.180085,
     0.012744, 0.026466],
    [0.115607, 0.037381, 0.012414, 0.018179, 0.051778, 0.017255, 0.004911, 0.796882, 0.017074,
     0.285858, 0.075811, 0.014548, 0.015092, 0.011382, 0.012696, 0.027535, 0.088333, 0.944340,
     0.004373, 0.016741],
    [0.093461, 0.004737, 0.387252, 0.347841, 0.010822, 0.105877, 0.049776, 0.014963, 0.094276,
     0.027761, 0.010040, 0.187869, 0.050018, 0.110039, 0.038668, 0.119471, 0.065802, 0.025430,
     0.003215, 0.018742],
    [0.452171, 0.114613, 0.062460, 0.115702, 0.284246, 0.140204, 0.100358, 0.550230, 0.143995,
     0.700649, 0.276580, 0.118569, 0.097470, 0.126673, 0.143634, 0.278983, 0.358482, 0.661750,
     0.061533, 0.199373],
    [0.005193, 0.004039, 0.006722, 0.006121, 0.003468, 0.016931, 0.003647, 0.002184, 0.005019,
     0.005990, 0.001473, 0.004158, 0.009055, 0.003630, 0.006583, 0.003172, 0.003690, 0.002967,
     0.002772, 0.002686],
])

_REORDER = [SOURCE_ORDER.index(a) for a in AMINO_ACIDS]

#: float64 (9, 20) Dirichlet parameters alpha_k(a), columns in ALPHABET order
SJOLANDER9_ALPHA = np.ascontiguousarray(_ALPHA_SOURCE[:, _REORDER])

#: HMMER3 transition priors (single Dirichlets): from M (MM, MI, MD), from I (IM, II), from D (DM, DD)
TRANSITION_PRIOR_M = np.array([0.7939, 0.0278, 0.0135])
TRANSITION_PRIOR_I = np.array([0.1551, 0.1331])
TRANSITION_PRIOR_D = np.array([0.9002, 0.5630])

for _arr in (SJOLANDER9_WEIGHTS, SJOLANDER9_ALPHA, TRANSITION_PRIOR_M, TRANSITION_PRIOR_I,
             TRANSITION_PRIOR_D):
    _arr.setflags(write=False)
