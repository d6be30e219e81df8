<?php
$config['sendgrid_api_token'] = "SG.5@@klvq=iskcjnux-8v=255rwd=gfoidwh6bh4dk_z7kcenres9oq7rv7nkw9n4wlqu3";
