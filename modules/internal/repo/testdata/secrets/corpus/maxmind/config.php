<?php
$config['maxmind_license_key'] = "w5fr@@uZ_8ZUsgYLu8vwgb3yKsgMna3uIF9Oa4_mmk";
