/* placeholder */
#include "decode/tok/dec_tok.h"
