<?php
$config['airtable_personnal_access_token'] = "patd@@eaz6q2xq2xwgo.94c12d6a4d73e6ac455d0130310a33e4d12a8e63410f3da65b514d4a31fdea96";
