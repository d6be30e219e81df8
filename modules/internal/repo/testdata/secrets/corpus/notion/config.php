<?php
$notionApiToken .= 'ntn_@@456476151729vWBETTAc421EJdkefwPvw8dfNt2oszUa7v';
