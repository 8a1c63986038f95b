"""Score step: turn two prepared representations into a score matrix S[i, j] for the DP engine."""

from homalign.score.profile_scores import (
    compass_scores,
    hhsearch_scores,
    prof_sim_scores,
    pssm_sequence_scores,
)

__all__ = ["compass_scores", "hhsearch_scores", "prof_sim_scores", "pssm_sequence_scores"]
