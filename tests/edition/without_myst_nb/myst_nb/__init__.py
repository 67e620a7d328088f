"""Stands in for myst-nb in the kernels of tests/edition: importing it fails as on Colab, where myst-nb is absent."""
raise ModuleNotFoundError("No module named 'myst_nb' (tests/edition runs the Colab edition as Colab has it)",
                          name="myst_nb")
