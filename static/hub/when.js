// Relative times ("3 s ago") kept current: every <time class="hub-when" datetime="..."> on the
// page, including ones added later by live updates. The absolute time is its title (hover).
// The words match a2ahub/when.py, which writes the first ones.
"use strict";

(function () {
  function duration(seconds) {
    if (seconds < 60) {
      return Math.floor(seconds) + " s";
    }
    const whole = Math.round(seconds);
    if (whole < 3600) {
      return Math.floor(whole / 60) + " min" + (whole % 60 ? " " + (whole % 60) + " s" : "");
    }
    if (whole < 86400) {
      const minutes = Math.floor((whole % 3600) / 60);
      return Math.floor(whole / 3600) + " h" + (minutes ? " " + minutes + " min" : "");
    }
    const hours = Math.floor((whole % 86400) / 3600);
    return Math.floor(whole / 86400) + " d" + (hours ? " " + hours + " h" : "");
  }

  function ago(iso, now) {
    const seconds = (now - Date.parse(iso)) / 1000;
    if (Math.abs(seconds) < 1) {
      return "just now";
    }
    return seconds > 0 ? duration(seconds) + " ago" : "in " + duration(-seconds);
  }

  function refresh() {
    const now = Date.now();
    document.querySelectorAll("time.hub-when[datetime]").forEach((node) => {
      node.textContent = ago(node.getAttribute("datetime"), now);
    });
  }

  window.hubWhen = { refresh: refresh, duration: duration };
  document.addEventListener("DOMContentLoaded", () => {
    refresh();
    window.setInterval(refresh, 1000);
  });
})();
