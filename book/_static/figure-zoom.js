// A figure drawn smaller than its image (the book's figures are 2x PNGs shown at the column's
// width) opens at its full size: click it, or press Enter on it. Sphinx already wraps such an
// image in a link to the PNG (a.image-reference), which would leave the page: the link now opens
// the enlarged figure in a modal <dialog> over the page instead. Esc, a click or the dialog's
// Close button shut it and give the focus back.
(function () {
  var dialog, big, closer, opener = null;
  function build() {
    dialog = document.createElement("dialog");
    dialog.className = "figure-zoom";
    dialog.setAttribute("aria-label", "Enlarged figure");
    closer = document.createElement("button");
    closer.type = "button";
    closer.className = "figure-zoom-close";
    closer.textContent = "Close (Esc)";
    big = document.createElement("img");
    dialog.appendChild(closer);
    dialog.appendChild(big);
    document.body.appendChild(dialog);
    closer.addEventListener("click", function () { dialog.close(); });
    dialog.addEventListener("click", function (e) {
      if (e.target === dialog || e.target === big) dialog.close();
    });
    dialog.addEventListener("close", function () { if (opener) opener.focus(); });
  }
  function open(img, focusBack) {
    if (!dialog) build();
    big.src = img.currentSrc || img.src;
    big.alt = img.alt || "";
    opener = focusBack;
    dialog.showModal();
    closer.focus();
  }
  function enable(img) {
    // only a figure shown at least a fifth smaller than its image gains by opening
    if (img.dataset.zoom || !img.naturalWidth || img.naturalWidth < 1.2 * img.clientWidth) return;
    img.dataset.zoom = "1";
    img.classList.add("zoomable");
    if (img.closest("a.image-reference")) return;  // the link takes the focus and Enter
    img.tabIndex = 0;
    img.setAttribute("role", "button");
    img.setAttribute("aria-label", (img.alt ? img.alt + " " : "") + "(enlarge)");
  }
  function target(e) {
    var t = e.target && e.target.closest ? e.target.closest("a.image-reference, img.zoomable") : null;
    if (!t) return null;
    var img = t.tagName === "A" ? t.querySelector("img.zoomable") : t;
    return img ? {img: img, focus: t.tagName === "A" ? t : img} : null;
  }
  // delegated, so that a figure whose element a later script replaces still opens
  document.addEventListener("click", function (e) {
    var t = target(e);
    if (!t) return;
    e.preventDefault();
    open(t.img, t.focus);
  });
  document.addEventListener("keydown", function (e) {
    var t = target(e);
    if (t && t.focus === t.img && (e.key === "Enter" || e.key === " ")) {
      e.preventDefault();
      open(t.img, t.focus);
    }
  });
  function setup() {
    document.querySelectorAll(".cell_output img").forEach(function (img) {
      if (img.complete) enable(img);
      else img.addEventListener("load", function () { enable(img); });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
