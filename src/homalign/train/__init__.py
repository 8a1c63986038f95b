"""homalign.train: a supervised, monitored, recoverable training runtime on PyTorch."""
