<?php
$config['mattermost_access_token'] = "mo4a@@zyn7ud28ojmmfazdj4banx";
