#include "portattn.h"

extern "C" int header_cxx_version(void);

extern "C" int header_cxx_version(void)
{
    portattn_fwd_params_t p;
    portattn_fwd_params_init(&p);
    return p.struct_size == sizeof p ? portattn_version() : -1;
}
