<?php
$config['mattermost_access_token'] = "dzp5@@dnkm35uq64kkhg6z1cwi3f";
