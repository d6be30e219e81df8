<?php
$config['sumologic_access_id'] = "suao@@uKTXdmtB80";
