"""The Dash page: layout, callbacks and the URL state. The only part of ppviz that imports dash."""
