"""The user_events ioctl structs (``include/uapi/linux/user_events.h``) as construct
grammars, the source of truth for their layout. :mod:`ehtool.kernel.user_events` packs
them with ``struct`` formats written out, because ``ehtool write`` does not import
construct (a shell loop pays for every start-up); tests/kernel/test_abi.py proves both
agree. Native byte order and packing, as the kernel reads them."""

from __future__ import annotations

import construct as c

#: struct user_reg: what DIAG_IOCSREG takes (``write_index`` comes back in it)
USER_REG = c.Struct(
    "size" / c.Int32un,
    "enable_bit" / c.Int8un,
    "enable_size" / c.Int8un,
    "flags" / c.Int16un,
    "enable_addr" / c.Int64un,
    "name_args" / c.Int64un,
    "write_index" / c.Int32un,
)

#: struct user_unreg: what DIAG_IOCSUNREG takes
USER_UNREG = c.Struct(
    "size" / c.Int32un,
    "disable_bit" / c.Int8un,
    "__reserved" / c.Int8un,
    "__reserved2" / c.Int16un,
    "disable_addr" / c.Int64un,
)
