"""The package version (a leaf, so that any module can record it without importing the package
root, which imports the public API)."""

__version__ = "0.1.0"
