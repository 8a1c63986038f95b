import torch

from homalign.train.launch import parameter_digest


class WithScalar(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(1.5))  # 0-dim parameter
        self.lin = torch.nn.Linear(3, 2)


def test_digest_handles_scalar_parameters_and_sees_changes():
    torch.manual_seed(0)
    m = WithScalar()
    d0 = parameter_digest(m)
    assert d0 == parameter_digest(m)
    with torch.no_grad():
        m.scale += 1e-3
    assert parameter_digest(m) != d0
