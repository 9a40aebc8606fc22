// The admin's side menu starts collapsed, so the lists have the page's width: Django opens it
// unless the browser remembers a choice, and this runs before Django's own script reads it.
// Opening it with its toggle is remembered as before.
"use strict";
try {
  if (localStorage.getItem("django.admin.navSidebarIsOpen") === null) {
    localStorage.setItem("django.admin.navSidebarIsOpen", "false");
  }
} catch (error) {
  // Storage refused (private mode, policy): Django's default, open, stays.
}
