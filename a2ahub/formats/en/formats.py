"""The hub's one way of writing dates and times, everywhere Django formats one (the admin,
the console, the developer pages): ISO order, to the second, in UTC (`TIME_ZONE`)."""

from __future__ import annotations

DATETIME_FORMAT = "Y-m-d H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
