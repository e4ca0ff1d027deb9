"""The abstract page: state, layout, callbacks, render and ids."""
