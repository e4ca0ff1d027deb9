"""The model page: state, layout, callbacks, render and ids."""
