// Hover values for a static figure (attnconv/chapters/shared/hover_spots.py): a cell that shows
// a figure, or the cell after it, may add <div class="hover-spots" data-spots='[{"x", "y",
// "text"}]'>, each x and y a fraction of the figure's image. This lays a round, focusable button over each place on the
// image; resting the pointer on it, focusing it (Tab) or tapping it shows its text in a tooltip,
// and Esc or moving away hides it. A small label under the image's right edge says that it
// has values. The spots are placed in percent, so they follow the image at any width the page
// gives it.
(function () {
  var tip = null;
  function tooltip() {
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "hover-tip";
      tip.id = "hover-tip";
      tip.setAttribute("role", "tooltip");
      tip.hidden = true;
      document.body.appendChild(tip);
    }
    return tip;
  }
  function show(spot) {
    var t = tooltip(), r = spot.getBoundingClientRect();
    t.textContent = spot.dataset.text;
    t.hidden = false;
    var page = document.documentElement.clientWidth, w = t.offsetWidth;
    var left = Math.max(4, Math.min(r.left + r.width / 2 - w / 2, page - w - 4));
    t.style.left = (left + window.scrollX) + "px";
    t.style.top = (r.bottom + window.scrollY + 6) + "px";
    spot.setAttribute("aria-describedby", "hover-tip");
  }
  function hide() { if (tip) tip.hidden = true; }
  function attach(el) {
    if (el.dataset.ready) return;
    // the figure is in the same cell, or in the cell just before (a figure's caption names
    // one output, so its hover values may come in the next cell)
    var cell = el.closest(".cell") || el.parentElement;
    var img = cell ? cell.querySelector("img") : null;
    var before = cell ? cell.previousElementSibling : null;
    if (!img && before) img = before.querySelector("img");
    if (!img) return;
    el.dataset.ready = "1";
    var outer = img.closest("a.image-reference") || img;
    // .hover-figure holds the frame (the image and its spots) and, under it, the label
    var figure = document.createElement("span");
    figure.className = "hover-figure";
    var frame = document.createElement("span");
    frame.className = "hover-frame";
    outer.parentNode.insertBefore(figure, outer);
    figure.appendChild(frame);
    frame.appendChild(outer);
    JSON.parse(el.dataset.spots).forEach(function (s) {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "hover-spot";
      // x of the image, inside the padding that dark mode gives the image (--hover-pad)
      b.style.left = "calc(" + (100 * s.x) + "% + " + (1 - 2 * s.x) + " * var(--hover-pad, 0px))";
      b.style.top = "calc(" + (100 * s.y) + "% + " + (1 - 2 * s.y) + " * var(--hover-pad, 0px))";
      b.dataset.text = s.text;
      b.setAttribute("aria-label", s.text.replace(/\n/g, "; "));
      b.addEventListener("mouseenter", function () { show(b); });
      b.addEventListener("focus", function () { show(b); });
      b.addEventListener("click", function () { show(b); });
      b.addEventListener("mouseleave", hide);
      b.addEventListener("blur", hide);
      frame.appendChild(b);
    });
    // the figure says it has values: a small label just under the image's right edge (never
    // over the figure's titles), and faint rings on its points while the pointer is over it
    var badge = document.createElement("span");
    badge.className = "hover-badge";
    badge.setAttribute("aria-hidden", "true");
    badge.textContent = "values on hover · Tab";
    figure.appendChild(badge);
    frame.classList.add("has-hover-values");
    frame.setAttribute("role", "group");
    frame.setAttribute("aria-label", el.dataset.label || "figure");
  }
  function attachAll() { document.querySelectorAll("div.hover-spots").forEach(attach); }
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") hide(); });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", attachAll);
  else attachAll();
})();
