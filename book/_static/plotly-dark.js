/* The book's interactive (Plotly) figures follow the page's colour mode.

   The notebooks draw them with Plotly's light template (plotly_white). When the theme's
   colour mode is dark (pydata-sphinx-theme sets data-theme="dark" on <html>, at load and when
   the reader switches), every figure on the page (.js-plotly-plot) is relaid out with the
   page's dark background, light text and dim grid lines; back in light mode the values the
   figure had before are restored. A MutationObserver follows data-theme, so a switch while
   reading repaints the figures too. Colours come from the theme's own CSS variables, with the
   theme's dark defaults as a fallback. Nothing is fetched: it works from file:// too. Pages
   without Plotly (or a page where plotly.js is absent) are left untouched. */
(function () {
  "use strict";

  var FALLBACK = {
    background: "#14181e", // --pst-color-background (dark)
    text: "#ced6dd", // --pst-color-text-base
    grid: "#29313d", // --pst-color-surface
    line: "#48566b", // --pst-color-border
  };
  var AXIS = /^[xy]axis[0-9]*$/;
  var saved = new WeakMap(); // figure -> the light values that the dark ones replaced

  function cssColour(name, fallback) {
    var v = getComputedStyle(document.documentElement).getPropertyValue(name);
    return (v && v.trim()) || fallback;
  }

  function darkColours() {
    return {
      background: cssColour("--pst-color-background", FALLBACK.background),
      text: cssColour("--pst-color-text-base", FALLBACK.text),
      grid: cssColour("--pst-color-surface", FALLBACK.grid),
      line: cssColour("--pst-color-border", FALLBACK.line),
    };
  }

  // The value at a Plotly attribute path ("sliders[0].currentvalue.font.color") of a layout;
  // null where unset, which Plotly.relayout reads as "back to the default".
  function valueAt(layout, path) {
    var parts = path.replace(/\[(\d+)\]/g, ".$1").split(".");
    var v = layout;
    for (var i = 0; i < parts.length; i++) {
      if (v === null || v === undefined) return null;
      v = v[parts[i]];
    }
    return v === undefined ? null : v;
  }

  function darkUpdate(gd, c) {
    var layout = gd.layout || {};
    var u = {
      paper_bgcolor: c.background,
      plot_bgcolor: c.background,
      "font.color": c.text, // titles, ticks, legend, annotations, colour bars follow it
    };
    Object.keys(layout).forEach(function (key) {
      if (AXIS.test(key)) {
        u[key + ".gridcolor"] = c.grid;
        u[key + ".zerolinecolor"] = c.grid;
        u[key + ".linecolor"] = c.line;
      }
    });
    (layout.sliders || []).forEach(function (s, i) {
      // a figure may set its current-value colour itself; step labels it hides stay hidden
      u["sliders[" + i + "].currentvalue.font.color"] = c.text;
    });
    (layout.updatemenus || []).forEach(function (m, i) {
      u["updatemenus[" + i + "].bgcolor"] = c.grid;
      u["updatemenus[" + i + "].bordercolor"] = c.line;
      u["updatemenus[" + i + "].font.color"] = c.text;
    });
    return u;
  }

  function paint(gd, dark) {
    if (!window.Plotly || !gd.layout) return;
    if (dark) {
      var u = darkUpdate(gd, darkColours());
      if (!saved.has(gd)) {
        var before = {};
        Object.keys(u).forEach(function (path) {
          before[path] = valueAt(gd.layout, path);
        });
        saved.set(gd, before);
      }
      window.Plotly.relayout(gd, u);
    } else if (saved.has(gd)) {
      var light = saved.get(gd);
      saved.delete(gd);
      window.Plotly.relayout(gd, light);
    }
  }

  function isDark() {
    return document.documentElement.dataset.theme === "dark";
  }

  function paintAll() {
    if (!window.Plotly) return;
    var dark = isDark();
    document.querySelectorAll(".js-plotly-plot").forEach(function (gd) {
      try {
        paint(gd, dark);
      } catch (err) {
        console.warn("plotly-dark: figure left as drawn", err);
      }
    });
  }

  function start() {
    paintAll();
    new MutationObserver(paintAll).observe(document.documentElement, {
      attributes: true,
      attributeFilter: ["data-theme"],
    });
  }

  // The figures are drawn by scripts in the page's body: start once the page has loaded.
  if (document.readyState === "complete") start();
  else window.addEventListener("load", start);
})();
