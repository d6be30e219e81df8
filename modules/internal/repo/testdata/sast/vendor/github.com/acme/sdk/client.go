package sdk

import "crypto/tls"

const defaultToken = "ghs_@@pPWzUB4q60sskDI1EDL0Y6wu1JOSNta0PKhe"

var cfg = &tls.Config{InsecureSkipVerify: true}

var password = "Wd3!kR8vQm2x"
