"""The book's pages: computed paragraphs (findings), prose helpers, figures, widgets, toys, graded exercises, the
book's settings and the Colab edition's side.

Names are read from their modules (``connlap_lite.pages.<module>``); the package's public face is
``connlap_lite`` itself.
"""
