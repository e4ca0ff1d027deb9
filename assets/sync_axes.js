/* Keep the Gantt and memory charts on one time axis: a zoom or pan on either is applied to the other;
   and tell the server about zooms of the time axis (it redraws a zoomed overview in detail). */
window.dash_clientside = Object.assign({}, window.dash_clientside, {
  ppviz: {
    syncAxes: function () {
      var noUpdate = window.dash_clientside.no_update;
      var triggered = window.dash_clientside.callback_context.triggered;
      var source = triggered.length && triggered[0].prop_id.indexOf("memory") === 0 ? "memory" : "gantt";
      var target = source === "memory" ? "gantt" : "memory";
      var from = document.querySelector("#" + source + " .js-plotly-plot");
      var to = document.querySelector("#" + target + " .js-plotly-plot");
      if (!from || !to || !from._fullLayout || !to._fullLayout || to.offsetParent === null) {
        return noUpdate;
      }
      var a = from._fullLayout.xaxis.range;
      var b = to._fullLayout.xaxis.range;
      var tolerance = 1e-9 * (Math.abs(a[1]) + 1);
      if (Math.abs(a[0] - b[0]) > tolerance || Math.abs(a[1] - b[1]) > tolerance) {
        window.Plotly.relayout(to, { "xaxis.range": [a[0], a[1]] });
      }
      return noUpdate;
    },
    /* Pass on only the Gantt chart's time-axis zooms and resets. Other relayout events (a resize,
       the first autosize) would call the server for nothing, and that call ending would hide the
       loading message of a slow redraw still on its way. */
    zoomRequest: function (relayout) {
      var noUpdate = window.dash_clientside.no_update;
      if (!relayout) {
        return noUpdate;
      }
      var onTime = Object.keys(relayout).some(function (key) {
        return key.indexOf("xaxis.range") === 0 || key === "xaxis.autorange";
      });
      return onTime ? relayout : noUpdate;
    },
  },
});
