"""The search page: state, layout, callbacks, render and ids."""
