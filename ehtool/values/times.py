"""Calendar arithmetic for UTC times, as glibc ``gmtime_r`` prints them."""

from __future__ import annotations

_INT32 = (-(1 << 31), (1 << 31) - 1)


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian calendar, ``days`` after 1970-01-01."""
    # Howard Hinnant's days-to-civil algorithm (era = 400 years); exact for any int.
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


def format_utc_seconds(sec: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` for seconds since the epoch, as glibc ``gmtime_r`` + ``%04d``.

    Years whose ``tm_year`` (year - 1900) does not fit an int print ``TIME(<sec>)``.
    """
    days, rem = divmod(sec, 86400)
    year, month, day = civil_from_days(days)
    if not _INT32[0] <= year - 1900 <= _INT32[1]:
        return f"TIME({sec})"
    hour, rem = divmod(rem, 3600)
    minute, second = divmod(rem, 60)
    return "%04d-%02d-%02dT%02d:%02d:%02d" % (year, month, day, hour, minute, second)  # noqa: UP031
