<?php
$config['airtable_personnal_access_token'] = "patm@@uba01f7cnyclj.7e44350b6142fde5cec156a149883efd0fb3061bdc6d68aa2bac3fdb49713dc1";
