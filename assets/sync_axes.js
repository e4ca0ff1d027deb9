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
      // Both charts on screen: in compare mode the memory box is hidden (each schedule's memory is in
      // the comparison), and its idle chart's autosize must not move the comparison's time axis.
      if (!from || !to || !from._fullLayout || !to._fullLayout || to.offsetParent === null || from.offsetParent === null) {
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
    /* The camera buttons download the chosen format at once, named after the view (zb-v_p8_m32.png):
       the options are set on the drawn charts now and in their config for the next draws. */
    imageOptions: function (format, hash) {
      var q = new URLSearchParams((hash || "").replace(/^#/, ""));
      var name = q.get("mode") === "compare" ? "compare" : q.get("schedule") || "1f1b";
      var stem = (name + "_p" + (q.get("devices") || "4") + "_m" + (q.get("microbatches") || "8")).replace(
        /[^A-Za-z0-9_.-]/g,
        "-"
      );
      var fmt = format === "png" ? "png" : "svg";
      var configs = ["gantt", "memory"].map(function (id) {
        var options = { format: fmt, filename: id === "gantt" ? stem : stem + "_memory", scale: fmt === "png" ? 2 : 1 };
        var gd = document.querySelector("#" + id + " .js-plotly-plot");
        if (gd && gd._context) {
          gd._context.toImageButtonOptions = options;
        }
        return { displaylogo: false, toImageButtonOptions: options };
      });
      return configs;
    },
    /* An upload past the size limit gets a message here and never travels; the server checks the rest. */
    checkUpload: function (contents, filename, limit) {
      var noUpdate = window.dash_clientside.no_update;
      if (!contents) {
        return [noUpdate, noUpdate];
      }
      var comma = contents.indexOf(",");
      var data = contents.slice(comma + 1);
      var padding = data.length - data.replace(/=+$/, "").length; /* base64 padding decodes to nothing */
      var bytes = Math.floor((data.length * 3) / 4) - padding;
      if (bytes > limit) {
        var text = (filename || "the file") + " is " + bytes.toLocaleString("en-US") + " bytes, larger than " +
          limit / 1024 + " KB: upload a smaller order (or use the CLI: ppviz simulate --order FILE)";
        return [noUpdate, { type: "Span", namespace: "dash_html_components",
          props: { children: text, className: "msg-error", role: "alert" } }];
      }
      return [{ contents: contents, filename: filename || "", at: Date.now() }, null];
    },
  },
});
