/* Keyboard access to the book's Plotly figures.

   Plotly draws its sliders and buttons in SVG, which takes no focus: a reader without a mouse
   cannot move them. Beneath every Plotly figure (.js-plotly-plot) that has sliders
   (layout.sliders) or buttons (layout.updatemenus), this script adds native controls that do
   the same:
   - for each slider, a labelled <input type="range"> (min 0, max steps - 1, step 1, value the
     slider's active step) whose label reads like the slider's own ("α = 0.1": its
     currentvalue prefix, the step's label and suffix). Moving it (arrow keys, Home, End,
     PageUp/PageDown, or the mouse) does what a click on the Plotly slider does: the slider's
     active step is set (Plotly.relayout of sliders[i].active), plotly_sliderchange is emitted
     and the step's method runs with its args (Plotly[method](gd, ...args), as plotly.js's own
     Plots.executeAPICommand does);
   - for each button of an update menu (Play, Pause), a native <button> running the same method
     and args.
   They repeat the figure's own controls, so they stay out of sight until one of them has the
   keyboard's focus (Tab reaches them; they then appear under the figure).
   The native controls follow the figure: when the Plotly slider moves (a click, a drag, an
   animation playing, a script relaying it out), plotly_sliderchange, plotly_relayout or
   plotly_animated updates the range input and its label.
   The figures are drawn by scripts in the page's body, some after the page has loaded: the page
   is searched at load and then every EVERY_MS ms, at most TRIES times. Colours come from the
   theme's CSS variables (light and dark mode alike), the controls keep within the column, and
   nothing is fetched: it works from file:// too. Pages without Plotly are left untouched. */
(function () {
  "use strict";

  var TRIES = 40; // searches for new figures after the page has loaded
  var EVERY_MS = 250;
  var STYLE =
    ".plotly-keys{box-sizing:border-box;max-width:100%;margin:0.25rem 0 0.75rem;" +
    "font-size:0.9rem;color:var(--pst-color-text-base,inherit)}" +
    // they repeat the figure's own controls: seen only while they hold the keyboard's focus
    ".plotly-keys:not(:focus-within){position:absolute;width:1px;height:1px;margin:0;" +
    "overflow:hidden;clip-path:inset(50%);white-space:nowrap}" +
    ".plotly-keys-slider{display:flex;flex-wrap:wrap;align-items:center;" +
    "column-gap:0.75rem;max-width:100%}" +
    // the labels share one width, so that a figure's range inputs line up
    ".plotly-keys-slider label{flex:0 1 18em;min-width:0;overflow-wrap:anywhere}" +
    ".plotly-keys-slider input{flex:1 1 10rem;min-width:0;max-width:100%;margin:0.25rem 0;" +
    "accent-color:var(--pst-color-primary,auto)}" +
    ".plotly-keys-buttons{display:flex;flex-wrap:wrap;gap:0.5rem;margin:0.25rem 0}" +
    ".plotly-keys button{font:inherit;color:inherit;cursor:pointer;" +
    "background:var(--pst-color-surface,transparent);" +
    "border:1px solid var(--pst-color-border,#8a8a8a);border-radius:0.25rem;" +
    "padding:0.1rem 0.6rem}" +
    ".plotly-keys :focus-visible{outline:2px solid var(--pst-color-primary,#0a7d91);" +
    "outline-offset:2px}";
  var done = new WeakSet(); // figures given their controls
  var count = 0; // for unique ids

  function plain(text) {
    // Plotly labels may hold its HTML-like markup (<sup>, <br>): the text only
    return String(text === undefined || text === null ? "" : text)
      .replace(/<br\s*\/?>/gi, " ")
      .replace(/<[^>]*>/g, "");
  }

  function stepText(slider, k, i) {
    var cv = slider.currentvalue || {};
    var step = slider.steps[k] || {};
    var label = step.label !== undefined ? step.label : step.value !== undefined ? step.value : k;
    var prefix = cv.prefix !== undefined ? cv.prefix : "slider " + (i + 1) + ": ";
    return plain(prefix) + plain(label) + plain(cv.suffix || "");
  }

  function addStyle() {
    if (document.getElementById("plotly-keys-style")) return;
    var style = document.createElement("style");
    style.id = "plotly-keys-style";
    style.textContent = STYLE;
    document.head.appendChild(style);
  }

  // What Plotly runs for a step or button: its method (animate, restyle, relayout, update) with
  // its args, as Plots.executeAPICommand does inside plotly.js (not exported by plotly.js 4).
  function execute(gd, method, args) {
    var P = window.Plotly;
    if (P.Plots && typeof P.Plots.executeAPICommand === "function") {
      return P.Plots.executeAPICommand(gd, method, args || []);
    }
    if (!method || method === "skip" || typeof P[method] !== "function") return null;
    return P[method].apply(null, [gd].concat(Array.isArray(args) ? args : []));
  }

  // Moving slider i of figure gd to step k, as a click on the Plotly slider does.
  function applyStep(gd, i, k) {
    var slider = gd.layout.sliders[i];
    var step = slider.steps[k];
    var previous = slider.active || 0;
    if (!step || k === previous) return;
    var update = {};
    update["sliders[" + i + "].active"] = k;
    var full = (gd._fullLayout.sliders || [])[i];
    return window.Plotly.relayout(gd, update).then(function () {
      gd.emit("plotly_sliderchange", {
        slider: full,
        step: full ? full.steps[k] : step,
        interaction: true,
        previousActive: previous,
      });
      if (step.method && step.method !== "skip" && step.execute !== false) {
        return execute(gd, step.method, step.args);
      }
    });
  }

  function sliderRow(gd, i, sync) {
    var slider = gd.layout.sliders[i];
    var id = "plotly-keys-" + ++count;
    var row = document.createElement("div");
    row.className = "plotly-keys-slider";
    var label = document.createElement("label");
    label.htmlFor = id;
    var input = document.createElement("input");
    input.type = "range";
    input.id = id;
    input.min = "0";
    input.max = String(Math.max(slider.steps.length - 1, 0));
    input.step = "1";
    input.dataset.slider = String(i);
    function show() {
      var s = gd.layout.sliders[i];
      var k = s.active || 0;
      input.value = String(k);
      label.textContent = stepText(s, k, i);
      input.setAttribute("aria-valuetext", label.textContent);
    }
    input.addEventListener("input", function () {
      var k = parseInt(input.value, 10);
      var s = gd.layout.sliders[i];
      label.textContent = stepText(s, k, i);
      input.setAttribute("aria-valuetext", label.textContent);
      var applied = applyStep(gd, i, k);
      if (applied && applied.catch) {
        applied.catch(function (err) {
          console.warn("plotly-keys: step not applied", err);
        });
      }
    });
    sync.push(show);
    show();
    row.appendChild(label);
    row.appendChild(input);
    return row;
  }

  function buttonsRow(gd, m) {
    var row = document.createElement("div");
    row.className = "plotly-keys-buttons";
    (m.buttons || []).forEach(function (b) {
      if (b.visible === false) return;
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = plain(b.label) || plain(b.method);
      button.addEventListener("click", function () {
        if (!b.method || b.method === "skip" || b.execute === false) return;
        var p = execute(gd, b.method, b.args);
        if (p && p.catch) p.catch(function () {}); // Pause interrupts Play's promise
      });
      row.appendChild(button);
    });
    return row.childNodes.length ? row : null;
  }

  function equip(gd) {
    var layout = gd.layout || {};
    var sliders = (layout.sliders || []).filter(function (s) {
      return s && s.steps && s.steps.length;
    });
    var menus = layout.updatemenus || [];
    done.add(gd);
    if (!sliders.length && !menus.length) return;
    addStyle();
    var box = document.createElement("div");
    box.className = "plotly-keys";
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Keyboard controls of the figure above");
    menus.forEach(function (m) {
      var row = buttonsRow(gd, m);
      if (row) box.appendChild(row);
    });
    var sync = [];
    (layout.sliders || []).forEach(function (s, i) {
      if (s && s.steps && s.steps.length) box.appendChild(sliderRow(gd, i, sync));
    });
    function follow() {
      sync.forEach(function (show) {
        show();
      });
    }
    ["plotly_sliderchange", "plotly_relayout", "plotly_animated"].forEach(function (ev) {
      gd.on(ev, follow);
    });
    gd.insertAdjacentElement("afterend", box);
  }

  // Figures drawn by now (Plotly has set gd.layout and its full layout): given their controls.
  function search() {
    if (!window.Plotly || !window.Plotly.Plots) return;
    document.querySelectorAll(".js-plotly-plot").forEach(function (gd) {
      if (done.has(gd) || !gd.layout || !gd._fullLayout || typeof gd.on !== "function") return;
      try {
        equip(gd);
      } catch (err) {
        console.warn("plotly-keys: figure left without keyboard controls", err);
      }
    });
  }

  function start() {
    var tries = 0;
    search();
    var timer = setInterval(function () {
      search();
      if (++tries >= TRIES) clearInterval(timer);
    }, EVERY_MS);
  }

  if (document.readyState === "complete") start();
  else window.addEventListener("load", start);
})();
